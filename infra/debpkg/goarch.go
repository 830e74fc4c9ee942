package debpkg

import "runtime"

// defaultGOARCH is a variable so tests can pretend to be another machine.
var defaultGOARCH = runtime.GOARCH
