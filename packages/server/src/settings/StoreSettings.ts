/**
 * The settings every command takes (docs/cli.md#settings): where the state is (SQLite under
 * `--data`, or PostgreSQL with `--database` and its connection settings) and the config file
 * the other settings may come from.
 */
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

const everywhere: ReadonlyArray<Setting.Part> = ["api", "worker", "admin"]

/** Where the SQLite database is when `--data` is not given. */
export const defaultData = "./.appexec"

/** Connections a process opens to PostgreSQL when `--database-pool-size` is not given. */
export const defaultPoolSize = 10

/** `--config FILE`: the settings file, read under the flags' names (never itself a key of the file). */
export const config = Setting.make({
  name: "config",
  description: "a JSON file (YAML for `.yaml`, `.yml`) of settings under the flags' names (`{\"lease\": \"1m\", " +
    "\"allow-private-networks\": true}`); flags win over variables, variables over the file " +
    "([the config file](#the-config-file))",
  parts: everywhere,
  value: Values.optionalPath("FILE"),
  default: undefined
})

/** `--data DIR`, made absolute. */
export const data = Setting.make({
  name: "data",
  description: "the data directory: the SQLite database `appexec.db` and, without `--database`, the media",
  parts: everywhere,
  value: Values.path("DIR"),
  default: defaultData,
  defaultText: `\`${defaultData}\``
})

/** `--database URL`: PostgreSQL instead of SQLite. */
export const database = Setting.make({
  name: "database",
  variable: "APPEXEC_DATABASE_URL",
  description: "PostgreSQL instead of SQLite under `--data` ([scaling](./scaling.md)): `postgres://user:password@" +
    "host:5432/db`, libpq parameters such as `?sslmode=require` work; media, the media URL key and the rate-limit " +
    "counters then live in the database",
  parts: everywhere,
  value: Values.postgresUrl,
  default: undefined
})

/** `--database-pool-size N`. */
export const databasePoolSize = Setting.make({
  name: "database-pool-size",
  description: "connections this process opens to PostgreSQL (plus one that listens for work)",
  parts: everywhere,
  value: Values.count,
  default: defaultPoolSize
})

/** `--database-statement-timeout DURATION`. */
export const databaseStatementTimeout = Setting.make({
  name: "database-statement-timeout",
  description: "longest a PostgreSQL statement may run; the server cancels it, and a connection that stops " +
    "answering fails its statement 5 s later",
  parts: everywhere,
  value: Values.optionalDuration,
  default: undefined
})

/** `--database-ca FILE`. */
export const databaseCa = Setting.make({
  name: "database-ca",
  description: "PEM file of the PostgreSQL server's certificate authority: TLS, verifying the server against it",
  parts: everywhere,
  value: Values.optionalPath("FILE"),
  default: undefined
})

/** `--no-migrate` (`APPEXEC_MIGRATE=false`). */
export const noMigrate = Setting.make({
  name: "no-migrate",
  variable: "APPEXEC_MIGRATE",
  description: "do not apply the migrations the database lacks on start (`appexec migrate` does, alone): a " +
    "database behind this appexec is refused, naming `appexec migrate` " +
    "([upgrading](./upgrading.md#migrating-apart-from-the-service)); its variable says the opposite: " +
    "`APPEXEC_MIGRATE=false` turns it on",
  parts: everywhere,
  value: Values.toggle,
  default: false,
  variableInverted: true
})

/** The settings of where the state is, in the order docs/cli.md lists them. */
export const group = { config, data, database, databasePoolSize, databaseStatementTimeout, databaseCa, noMigrate }
