/**
 * Who a process is (docs/operations.md#the-fleet): the name `serve` and `worker` show in the
 * operator views, in their log lines (`process=`) and in the leases they hold (`appexec
 * executions list`). Without one a process is `host:pid`.
 */
import * as Setting from "./Setting.js"
import * as Values from "./Values.js"

/** `--name NAME`. */
export const name = Setting.make({
  name: "name",
  description: "the name of this process in the operator views, its log lines (`process=NAME`) and the " +
    "leases it holds (`appexec executions list`); give each process of a deployment its own " +
    "([the fleet](./operations.md#the-fleet))",
  parts: ["api", "worker"],
  value: Values.processName,
  default: undefined,
  defaultText: "`host:pid`"
})

/** The process's identity. */
export const group = { name }
