import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import { greet } from "./main.js"

describe("embedding example", () => {
  it("imports the app, runs it in-process and gets the greeting", async () => {
    const done = await Effect.runPromise(greet("Ada"))
    expect(done.status).toBe("completed")
    expect(done.outputs).toEqual([
      { id: "greeting", label: "Greeting", type: "text", value: "Hello Ada, in a warm tone.", status: "completed", error: null }
    ])
  })
})
