/**
 * The tables of docs/cli.md#settings, written from the settings themselves: one table per group,
 * each setting's flag, variable, default, the processes that use it and what it is for. The
 * section between `BEGIN` and `END` in docs/cli.md is this text (`npm run docs:settings -w
 * @appexec/server` writes it; a test fails when the two differ).
 */
import * as Catalog from "./Catalog.js"
import type * as Setting from "./Setting.js"

/** The line before the generated section. */
export const BEGIN = "<!-- settings: begin (written by `npm run docs:settings -w @appexec/server`; do not edit) -->"

/** The line after it. */
export const END = "<!-- settings: end -->"

/** Who uses a setting, by the parts it governs. */
const usedBy = (parts: ReadonlyArray<Setting.Part>): string =>
  parts.includes("admin")
    ? "every command"
    : parts.includes("api") && parts.includes("worker")
    ? "API, worker"
    : parts.includes("api")
    ? "API"
    : "worker"

/** A default as the table shows it: words as written, a value in code. */
const defaultCell = (setting: Setting.Any): string =>
  setting.shownDefault.includes("`") || /^(off|none|no cap)$/.test(setting.shownDefault) ||
    setting.shownDefault.includes(" ")
    ? setting.shownDefault
    : `\`${setting.shownDefault}\``

/** One row of a table. */
const row = (setting: Setting.Any): string =>
  [
    `\`--${setting.name}${setting.toggle ? "" : ` ${setting.pseudo}`}\``,
    `\`${setting.variable}\``,
    defaultCell(setting),
    usedBy(setting.parts),
    setting.description.replace(/\|/g, "\\|")
  ].map((cell) => ` ${cell} `).join("|").replace(/^/, "|").replace(/$/, "|")

/** The table of one group, under its heading. */
const table = (group: Catalog.Group): string =>
  [
    `### ${group.title}`,
    "",
    "| Flag | Variable | Default | Used by | Meaning |",
    "|---|---|---|---|---|",
    ...group.settings.map(row)
  ].join("\n")

/** The generated section: every group's table, between `BEGIN` and `END`. */
export const section = (): string => [BEGIN, "", ...Catalog.groups.map(table).flatMap((t) => [t, ""]), END].join("\n")

/** `markdown` with its generated section replaced by the current one; undefined when it has none. */
export const update = (markdown: string): string | undefined => {
  const from = markdown.indexOf(BEGIN)
  const to = markdown.indexOf(END)
  return from === -1 || to < from ? undefined : markdown.slice(0, from) + section() + markdown.slice(to + END.length)
}
