// Package config is the one place where flashsale's settings are declared.
//
// Every setting is a command-line flag whose default can come from an
// environment variable: flag "mysql-dsn" reads FLASHSALE_MYSQL_DSN. A flag given
// on the command line wins over the environment. A bad value stops start-up with
// one line that names the setting and the expected form (see Parse).
//
// Each deployable declares Common and its own component struct and parses both
// with Parse; every settings struct has RegisterFlags(*flag.FlagSet) and
// Validate() error (Registerer), in the style of dskit.
//
// It owns the setting structs (Common and one per component: Ingress,
// Consumer, Reaper, Setup, Gate, Rebalance, Buckets, Kafka, Redis,
// RedisBatching, ServerChecks), their flags, defaults and validation, and the
// derived connection settings (DSN, RedisConn, the Kafka and MySQL TLS).
// Two parts live in subpackages that link no store driver: the token
// settings (jwtconfig.JWT, which Ingress embeds), so pkg/devtoken and
// flashsalectl read them without the MySQL driver config's DSNs need, and
// the reading of FLASHSALE_* variables (internal/envflag), which both use;
// config re-exports it (ApplyEnv, EnvName, ErrInvalid, Secret).
//
// Importers: the ingress, consumer, reaper, setup and bench commands,
// pkg/service and pkg/startup, the store clients that are built from settings
// (pkg/stock, pkg/orderlog), pkg/httpapi, and internal/testenv and
// internal/fuzzprep, which read the same FLASHSALE_* settings the deployables
// do; pkg/devtoken imports only jwtconfig. It imports its
// subpackages (jwtconfig imports pkg/auth, to check a JWKS URL) and
// pkg/buildinfo (for -version), and no other package of the module: never a
// store client or a feature package, which sit above it (pkg/stock and
// pkg/orderlog import it).
package config
