# Writes G01-fill-workspace.diff's patch body: fill/base.bin, 1 MiB of zeros as
# a literal, then copies of it grown by a git binary delta (each copy op takes
# the whole base) to `total` bytes in all, in files of at most 64 MiB.
import sys, zlib
MiB = 1 << 20
total = int(sys.argv[1])
B85 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"

def b85(data):
    out = []
    for i in range(0, len(data), 52):
        chunk = data[i:i + 52]
        n = len(chunk)
        line = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[n - 1] if n <= 26 else "abcdefghijklmnopqrstuvwxyz"[n - 27]
        chunk += b"\0" * (-len(chunk) % 4)
        for j in range(0, len(chunk), 4):
            v = int.from_bytes(chunk[j:j + 4], "big")
            s = ""
            for _ in range(5):
                s = B85[v % 85] + s
                v //= 85
            line += s
        out.append(line)
    return "\n".join(out) + "\n"

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def copy_op(off, size):
    op, args = 0x80, bytearray()
    for i in range(4):
        byte = (off >> (8 * i)) & 0xFF
        if byte:
            op |= 1 << i
            args.append(byte)
    for i in range(3):
        byte = (size >> (8 * i)) & 0xFF
        if byte:
            op |= 1 << (4 + i)
            args.append(byte)
    return bytes([op]) + bytes(args)

def delta(src_size, dst_size):
    d = varint(src_size) + varint(dst_size)
    left = dst_size
    while left:
        n = min(left, src_size)
        d += copy_op(0, n)
        left -= n
    return d

def fragment(kind, data):
    return "%s %d\n%s\n" % (kind, len(data), b85(zlib.compress(data, 9)))

base = b"\0" * MiB
out = ["diff --git a/fill/base.bin b/fill/base.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..9e0f96a2a253b173cb45b41868209a5d043e1437\nGIT binary patch\n"
       + fragment("literal", base) + fragment("literal", b"")]
left = total - MiB
i = 0
while left > 0:
    n = min(left, 64 * MiB)
    i += 1
    out.append("diff --git a/fill/base.bin b/fill/%02d.bin\nsimilarity index 0%%\ncopy from fill/base.bin\ncopy to fill/%02d.bin\nGIT binary patch\n" % (i, i)
               + fragment("delta", delta(MiB, n)) + fragment("delta", delta(n, MiB)))
    left -= n
sys.stdout.write("".join(out))
