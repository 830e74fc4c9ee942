package launch

import "syscall"

var syscallZero = syscall.Signal(0)
