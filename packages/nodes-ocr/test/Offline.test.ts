/**
 * Text is read with no network at all: the built package, under plain node, reads an image
 * while a guard preloaded into every thread refuses and reports any socket, name lookup or
 * fetch; it reports none, and the same guard is seen refusing the network from the main thread
 * and from a worker thread. Also: the thread script in `src/internal/OcrThreadSource.ts` is the
 * one `scripts/ocr-thread.mjs` compiles to. Runs the built package: `npm run build` first.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { textImage } from "./support/Images.js"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

describe("offline", () => {
  it.scoped("reads text with every socket, lookup and fetch refused in every thread, and tries none", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "appexec-ocr-"))),
        (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
      )
      const file = join(dir, "note.png")
      writeFileSync(file, yield* textImage(["Nothing leaves this machine"], { width: 700, height: 120, size: 34 }))
      const ran = spawnSync(
        process.execPath,
        ["--require", here("./support/no-network.cjs"), here("./support/read-offline.mjs"), file],
        { encoding: "utf8", timeout: 60_000 }
      )
      expect(ran.status, ran.stderr).toBe(0)
      expect(ran.stdout.split("\n")).toEqual([
        "Nothing leaves this machine",
        "main thread: fetch refused",
        "worker thread: fetch refused",
        ""
      ])
      expect(ran.stderr.split("\n").filter((line) => line.startsWith("network attempt"))).toEqual([
        "network attempt: fetch (main thread)",
        "network attempt: fetch (worker thread)"
      ])
    }))

  it("the thread script is compiled from scripts/ocr-thread.mjs", () => {
    const check = spawnSync(process.execPath, [here("../scripts/ocr-thread-source.mjs"), "--check"], {
      encoding: "utf8"
    })
    expect(check.status, check.stderr).toBe(0)
  })
})
