/**
 * The app of the queue benchmarks (queue, scaling, graphile): its input straight to its output,
 * so that a figure measures the queue and not the work.
 */

/** A public app whose only node passes its input `in` to its output. */
export const noop = {
  name: "No-op",
  public: true,
  nodes: [
    { id: "in", type: "input.text", label: "In", config: { name: "in", required: true } },
    { id: "out", type: "output.text", label: "Out" }
  ],
  edges: [{ source: "in", target: "out" }]
}
