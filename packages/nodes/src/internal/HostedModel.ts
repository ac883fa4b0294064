/**
 * What the nodes of a hosted model share (`provider.replicate`, `provider.fal`): the config fields
 * of the model's input, its result, the token and the API root, and the parts of the request
 * node's header they fill alike (the placeholders of `input`, the token sent as `Authorization`).
 */
import { SecretStore } from "@appexec/core"
import { Schema } from "effect"
import { Pointer } from "../http/HttpJob.js"
import * as ProviderHttp from "./ProviderHttp.js"
import { placeholdersIn } from "./template.js"

/** The config fields of a hosted model's node whose token is the secret `defaultSecret` unless `secret` names another. */
export const fields = (defaultSecret: string) => ({
  /** The model's input, a JSON object whose strings may name upstream nodes (`"{{prompt}}"`). */
  input: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  /** What the node yields: `media` (default), `text`, `json` or `url`. */
  output: Schema.optionalWith(Schema.Literal("media", "text", "json", "url"), { default: () => "media" as const }),
  /** Pointer of the result in the model's answer (each node has its default). */
  pick: Schema.optional(Pointer),
  /** The name of the operator's secret holding the token (`defaultSecret` unless given). */
  secret: Schema.optionalWith(SecretStore.SecretName, { default: () => defaultSecret }),
  /** The API root (default: the provider's). */
  baseUrl: Schema.optional(Schema.NonEmptyString),
  /** Time limit of the whole job in ms (default 600000, 10 minutes). */
  timeoutMs: Schema.optional(Schema.Number.pipe(Schema.int(), Schema.between(1000, 6 * 60 * 60 * 1000))),
  /** Retries of transient failures: `count` (0–10, default 4) within `withinMs` (default 2 minutes). */
  retry: Schema.optional(ProviderHttp.RetryConfig)
})

/** What the header reads of a hosted model's config: its `input` and the secret of its token. */
export interface HostedModelConfig {
  readonly input: Readonly<Record<string, unknown>>
  readonly secret: string
}

/**
 * The parts of a hosted model's request node header: the placeholders of its `input`, and its
 * token (the secret `secret`) sent as `Authorization` after `scheme` (`"Bearer"`, `"Key"`).
 */
export const header = (scheme: string) => ({
  placeholders: (config: HostedModelConfig) => placeholdersIn(config.input),
  headers: (config: HostedModelConfig) => ({ authorization: { secret: config.secret, prefix: `${scheme} ` } })
})
