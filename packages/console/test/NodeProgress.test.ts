/**
 * How a node's progress reads: done (100%) once its run completed, whatever it last reported;
 * stopped where it was when the run was canceled or failed; as reported while it runs.
 */
import { describe, expect, it } from "@effect/vitest"
import { barOf } from "../src/app/pages/run/NodeProgress.js"

const at = (fraction: number) => ({ nodeId: "zoom", fraction, message: `${Math.round(fraction * 100)}% encoded` })

describe("barOf", () => {
  it("reads done, 100%, for a completed run whose node last said 98%", () => {
    expect(barOf(at(0.98), "completed")).toEqual({
      nodeId: "zoom",
      fraction: 1,
      percent: 100,
      stopped: false,
      note: "Done"
    })
  })

  it("says where a canceled or failed run stopped a node", () => {
    expect(barOf(at(0.21), "failed")).toMatchObject({
      percent: 21,
      stopped: true,
      note: "Stopped at 21%: the run ended first."
    })
    expect(barOf(at(1), "failed")).toMatchObject({ percent: 100, stopped: false, note: "100% encoded" })
  })

  it("shows a running node's progress and message", () => {
    expect(barOf(at(0.5), "running")).toMatchObject({ fraction: 0.5, percent: 50, stopped: false, note: "50% encoded" })
  })
})
