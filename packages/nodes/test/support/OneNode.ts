/**
 * Apps of one node for tests: URL inputs into the node under test, its result to an output; run
 * to their end, with the output's bytes or the failure's message, and the files they read served
 * by a fake origin.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import * as FakeOrigin from "./FakeOrigin.js"
import { download, run } from "./Instance.js"

/** An app: a URL input (accepting `accept`) through `type` (with `config`) to an output of `output` kind. */
export const oneNode = (
  type: string,
  config: Record<string, unknown>,
  options: { readonly accept?: ReadonlyArray<string>; readonly output?: "video" | "image"; readonly inputs?: number } =
    {}
) => {
  const inputs = Array.from({ length: options.inputs ?? 1 }, (_, i) => `in${i}`)
  return {
    name: `One ${type}`,
    nodes: [
      ...inputs.map((name) => ({
        id: name,
        type: "input.url",
        config: { name, required: true, accept: options.accept ?? ["image"] }
      })),
      { id: "work", type, config },
      { id: "result", type: `output.${options.output ?? "video"}`, label: "Result" }
    ],
    edges: [...inputs.map((source) => ({ source, target: "work" })), { source: "work", target: "result" }]
  }
}

/** Runs `definition` on `inputs` and answers the completed output's bytes and content type, and its URL. */
export const resultOf = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const done = yield* run(definition, inputs)
    expect(done.errorMessage).toBeNull()
    expect(done.status).toBe("completed")
    const output = done.outputs[0]!
    return { ...(yield* download(output.value!)), url: output.value!, type: output.type, executionId: done.executionId }
  })

/** Runs `definition` on `inputs` and answers its error message, the execution having failed. */
export const failureOf = (definition: unknown, inputs: Record<string, string>) =>
  Effect.gen(function*() {
    const done = yield* run(definition, inputs)
    expect(done.status).toBe("failed")
    return done.errorMessage!
  })

/** A fake origin serving each of `files` (path → content type and bytes). */
export const serving = (files: Record<string, { readonly type: string; readonly bytes: Uint8Array }>) =>
  FakeOrigin.start(
    Object.fromEntries(
      Object.entries(files).map(([path, file]) => [path, { headers: { "content-type": file.type }, body: file.bytes }])
    )
  )
