// Package attack is agentbox's attacker test suite. It holds no production code: its
// tests run a hostile static program (./attacker) inside `agentbox run` (and, where a
// persistent sandbox differs, inside an environment of package env) and try every
// escape and abuse on the list every sandbox must survive, then check from the host
// that nothing got through. Each test asserts both that the attempt failed and that
// the host is unchanged: protected files (content, mode, link count, mtime) and, with
// the default overlay, the whole host workspace; a host secret never in any output;
// host victim processes alive and unsignalled; no process of the run left (result
// survivors == 0, none with the run's tag, no orphan reparented to the test, which is a
// child subreaper) and the run's cgroups and upper layer (with its host tmpfs) removed.
//
// Most tests have a "control" subtest that runs the same attack directly on the host,
// where nothing stops it, and requires it to succeed (and, where it changes the host,
// requires the host checks to notice): a test that could not fail would prove nothing.
//
// It does not test the proxy or DNS (vectors 16, 17), agent-level bypasses (25), or the
// racing of symlink swaps against setup (the overlay and detached mount trees leave no
// host path for setup to resolve in the workspace; see the report).
//
//	vector (ANCHORS.md)          test                                         mechanism that stops it
//	1  writes outside roots       TestEscape_WriteOutsideWritableRoots         tmpfs root, read-only binds, uid 1000, Landlock
//	2  .git/hooks, .git/config    TestEscape_GitHooksThroughOverlay            copy-on-write overlay (host workspace unchanged)
//	2  … with --write             TestEscape_GitHooksInWriteBind               .git bound read-only over itself inside the read-write bind
//	3  planted symlinks           TestEscape_PlantedSymlinks                   links resolve in the sandbox's own root; setup uses detached trees
//	3,4 host reads of output      TestEscape_DiffOutDoesNotFollowLinks         diff reads links as links, never opens FIFOs
//	4  output files               TestEscape_OutputFilesDoNotFollowPlantedLinks output files opened O_NOFOLLOW before the run
//	5  rename / hardlink          TestEscape_RenameAndHardlinkTricks           mount boundaries (EXDEV), absent host paths, read-only binds
//	6  /proc pids, environ        TestEscape_ProcHostPidsInvisible             pid namespace + fresh procfs, init not dumpable
//	6  /proc/sys, kcore, …        TestEscape_ProcSysWritesAndKernelFiles       read-only /proc/sys binds, masks, uid 1000
//	6  host facts in /proc        TestEscape_ProcHostInformation               masks, generated /proc/stat and boot id, time namespace
//	6,24 /proc/self/exe           TestEscape_ProcSelfExeOverwrite_CVE_2019_5736 init of another identity, ETXTBSY, read-only mounts
//	7  leaked descriptors         TestEscape_LeakedFDs_CVE_2024_21626          agentbox closes inherited fds; init's cwd/root inside
//	8  TIOCSTI / TIOCLINUX        TestEscape_TIOCSTI_CVE_2017_5226             seccomp ioctl rule on the low 32 bits (EPERM)
//	8  the user's tty as stdio    TestEscape_TerminalThroughStdio              no terminal fd reaches the command: pipes for 0, 1, 2
//	8  escape sequences in output TestEscape_TerminalEscapeSequences           terminal.Writer on a terminal: shown, not executed
//	9  ptrace / vm_writev / kill  TestEscape_PtraceAndSignalsAgainstInitAndHost seccomp (ptrace, process_vm_*), pid namespace
//	9  prlimit / nice on pid 1    TestEscape_CommandEndsItsInit                init of its own uid (the kernel's EPERM); seccomp rules on pid 1
//	10 int 0x80, x32, socketcall  TestEscape_ForeignSyscallABIs                seccomp arch and x32-bit check (SIGSYS)
//	11 high bits in int args      TestEscape_HighBitsIn32BitArguments          seccomp compares the low 32 bits
//	12 io_uring                   TestEscape_IoUring                           seccomp (EPERM)
//	13 nested userns, remounts    TestEscape_NestedUserNamespacesAndRemounts   seccomp (unshare, clone flags, clone3, mount API), no caps
//	14 mount propagation          TestEscape_MountPropagation                  private mount namespace, private detached trees
//	15 network                    TestEscape_NetworkReachesHost                network namespace (lo only), socket family rule, no CAP_NET_RAW;
//	                                                                           --write: no Unix sockets (seccomp) below Landlock ABI 9
//	15 loopback TCP inside        TestEscape_LoopbackTCPStaysInside            network namespace: its own loopback works, the host's is unreachable
//	18 fork bomb                  TestAbuse_ForkBomb                           pids cgroup, timeout + cgroup kill
//	18 memory balloon             TestAbuse_MemoryBalloon                      memory cgroup (swap off), OOM reported
//	18 … with no limit flag       TestAbuse_DefaultLimits                      default pids (1024) and memory (half of RAM, at most 4G) limits
//	18 tmpfs fill                 TestAbuse_TmpfsFill                          size-limited tmpfs for /tmp and /dev/shm
//	18 workspace fill             TestAbuse_WorkspaceFill                      upper layer on a host tmpfs of --workspace-size (ENOSPC)
//	18 fd exhaustion              TestAbuse_FdExhaustion                       RLIMIT_NOFILE (--open-files)
//	18 stdout flood               TestAbuse_StdoutFlood                        bounded head+tail capture, --output-total
//	18 CPU spin                   TestAbuse_CPUSpin                            RLIMIT_CPU / cgroup CPU accounting (--cpu-time)
//	18 file size                  TestAbuse_FileSize                           RLIMIT_FSIZE (--file-size)
//	18 trees the diff cannot show TestAbuse_DiffRenderLimits                   the diff omits with a note and bounds its work; the run keeps its status
//	19 setsid / double fork       TestEscape_SurvivorsAfterSetsidAndDoubleFork pid namespace (init dies, all die), cgroup kill
//	20 kill(-1)                   TestEscape_KillAllFromInside                 pid namespace
//	21 cross-sandbox channels     TestEscape_CrossSandboxChannels              IPC/net namespaces, private /dev/shm, keyctl rule, one overlay per run
//	22 setuid / fcaps binaries    TestEscape_SetuidAndFileCapabilityBinaries   no_new_privs, unmapped owner, nosuid
//	22 mknod, /dev/kvm            TestEscape_DeviceNodes                       no CAP_MKNOD, minimal /dev
//	22 set-ID left for the host   TestEscape_SetuidPlantedForTheHost           seccomp rule against S_ISUID/S_ISGID in modes (--write)
//	23 secrets in env and home    TestEscape_SecretsInEnvironmentAndHome       environment built from --env only; host home absent
//	24 runtime binary, config     TestEscape_RuntimeBinaryAndConfigTampering   host paths absent, /proc/1/exe and /proc/1/fd closed
//	-  default isolation          TestDefaultIsolationIsNamespace              the CLI default
//	-  the host kernel itself     TestEscape_HostKernelServesTheCommand        gVisor's Sentry (only the gvisor level stops it)
//	-  every level                TestSuiteOnEveryLevel                        each case's outcome at process, namespace and gvisor
//
// Every run uses --isolation namespace unless AGENTBOX_ATTACK_ISOLATION names another
// level; TestSuiteOnEveryLevel re-executes the test binary with it set to each level
// and requires the outcome its table (suiteLevels) gives every case there.
//
// The tests need root (they fail instead of skipping under CI=true). TestMain builds
// agentbox and the attacker once, and checks with `agentbox run -- /bin/true` that
// namespace isolation works, so that a broken build is one clear failure.
package attack
