package resp

// ServerKind tells a server's family and version from its INFO server
// fields: Valkey keeps redis_version at 7.2.4 for clients and adds
// valkey_version (and server_name:valkey); KeyDB says keydb in
// server_name or keydb_version; any other server_name (linerate's sink)
// is given as it is; the rest is Redis, at redis_version.
func ServerKind(info map[string]string) (kind, version string) {
	version = info["redis_version"]
	switch {
	case info["valkey_version"] != "":
		return "valkey", info["valkey_version"]
	case info["keydb_version"] != "":
		return "keydb", version
	case info["server_name"] != "":
		return info["server_name"], version
	}
	return "redis", version
}
