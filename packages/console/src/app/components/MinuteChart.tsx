/**
 * A small chart of the last hour, a bar per minute, drawn in SVG (no chart library): the
 * executions finished each minute (completed, with the failed ones stacked on them), or the
 * share of them that failed. Colours come from the style sheet (classes), never from a string.
 * It is drawn at the width it is shown at (read from the page), so that its 11-pixel axis labels
 * stay 11 pixels on a phone too. Its title says the totals for screen readers.
 */
import { useLayoutEffect, useRef, useState } from "preact/hooks"
import type { Minute } from "../api/OperatorApi.js"

/** The width drawn before the page says how wide the chart is shown, and the narrowest drawn. */
const FIRST_WIDTH = 600
const NARROWEST = 240
const HEIGHT = 150
const LEFT = 40
const BOTTOM = 20
const TOP = 8

/** A round upper bound for the axis: 1, 2, 5, 10, 20, 50… at least `max`. */
const niceMax = (max: number): number => {
  if (max <= 1) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power
  return 10 * power
}

/** The chart of `minutes`: `throughput` (finished per minute) or `failures` (the share that failed). */
export const MinuteChart = (
  { kind, minutes, title }: {
    readonly kind: "throughput" | "failures"
    readonly minutes: ReadonlyArray<Minute>
    readonly title: string
  }
) => {
  const frame = useRef<HTMLDivElement>(null)
  const [width, setWidth] = useState(FIRST_WIDTH)
  useLayoutEffect(() => {
    const element = frame.current
    if (element === null) return
    const measure = () => setWidth(Math.max(NARROWEST, Math.round(element.clientWidth)))
    measure()
    const observer = new ResizeObserver(measure)
    observer.observe(element)
    return () => observer.disconnect()
  }, [])
  const plotWidth = width - LEFT - 4
  const plotHeight = HEIGHT - BOTTOM - TOP
  const slot = plotWidth / Math.max(1, minutes.length)
  const barWidth = Math.max(1, slot - 2)
  const top = kind === "failures" ? 1 : niceMax(Math.max(0, ...minutes.map((m) => m.completed + m.failed)))
  const y = (value: number) => TOP + plotHeight - (value / top) * plotHeight
  const label = (value: number) => (kind === "failures" ? `${Math.round(value * 100)}%` : String(value))
  return (
    <div class="chart-frame" ref={frame}>
      <svg
        class={`chart chart-${kind}`}
        viewBox={`0 0 ${width} ${HEIGHT}`}
        width={width}
        height={HEIGHT}
        role="img"
        aria-label={title}
        data-testid={`chart-${kind}`}
      >
        <title>{title}</title>
        {/* Counts are whole: the middle line is drawn only where it falls on a whole number. */}
        {[0, 0.5, 1].filter((share) => kind === "failures" || Number.isInteger(share * top)).map((share) => (
          <g key={share} class="grid">
            <line x1={LEFT} x2={width - 4} y1={y(share * top)} y2={y(share * top)} />
            <text x={LEFT - 6} y={y(share * top) + 4} class="axis" text-anchor="end">
              {label(share * top)}
            </text>
          </g>
        ))}
        {minutes.map((minute, i) => {
          const x = LEFT + i * slot + 1
          const finished = minute.completed + minute.failed
          if (kind === "failures") {
            if (finished === 0) return null
            const rate = minute.failed / finished
            return (
              <rect key={minute.at} class="bar failed" x={x} width={barWidth} y={y(rate)} height={y(0) - y(rate)}>
                <title>
                  {new Date(minute.at).toLocaleTimeString()}: {Math.round(rate * 100)}% of {finished} failed
                </title>
              </rect>
            )
          }
          if (finished === 0) return null
          return (
            <g key={minute.at}>
              <title>
                {new Date(minute.at).toLocaleTimeString()}: {minute.completed} completed, {minute.failed} failed
              </title>
              <rect
                class="bar completed"
                x={x}
                width={barWidth}
                y={y(minute.completed)}
                height={y(0) - y(minute.completed)}
              />
              {minute.failed > 0 && (
                <rect
                  class="bar failed"
                  x={x}
                  width={barWidth}
                  y={y(finished)}
                  height={y(minute.completed) - y(finished)}
                />
              )}
            </g>
          )
        })}
        <line class="baseline" x1={LEFT} x2={width - 4} y1={y(0)} y2={y(0)} />
        <text class="axis" x={LEFT} y={HEIGHT - 4}>
          60 min ago
        </text>
        <text class="axis" x={width - 4} y={HEIGHT - 4} text-anchor="end">
          now
        </text>
      </svg>
    </div>
  )
}
