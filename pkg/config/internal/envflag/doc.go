// Package envflag reads a flag set's settings from the environment: flag
// "mysql-dsn" from FLASHSALE_MYSQL_DSN, or from the file FLASHSALE_MYSQL_DSN_FILE
// names. It is pkg/config's reading of the environment, apart from config's
// setting structs so pkg/config/jwtconfig can read the token settings with
// it without linking a store driver; pkg/config re-exports what it offers
// (EnvPrefix, EnvName, FileSuffix, ErrInvalid, ApplyEnv, Secret), and
// everyone else uses those.
//
// It owns no state. Importers: pkg/config and pkg/config/jwtconfig (it is
// internal to pkg/config). It imports nothing of the module.
package envflag
