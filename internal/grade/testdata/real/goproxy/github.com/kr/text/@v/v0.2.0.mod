module "github.com/kr/text"

require "github.com/creack/pty" v1.1.9
