// Package debpkg reads Debian's package indexes and unpacks a package with
// its shared-library closure (libc, loader, jemalloc) into a private root
// through a private apt configuration: nothing is installed on the system.
// infra/servers builds the store of server versions on it.
package debpkg
