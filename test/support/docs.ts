/**
 * Reading the repository's Markdown as GitHub renders it: its headings' anchors, its
 * relative links, and its tables. Used by test/unit/docs.test.ts to keep README.md and
 * docs/ true to themselves and to the code.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";

/** Markdown with fenced code blocks blanked out (their `#` lines are not headings, their `[x](y)` not links). */
export function withoutCode(markdown: string): string[] {
  let fence: string | null = null;
  return markdown.split("\n").map((line) => {
    const open = /^\s*(```+|~~~+)/.exec(line);
    if (fence) {
      if (open && open[1]!.startsWith(fence)) fence = null;
      return "";
    }
    if (open) {
      fence = open[1]!;
      return "";
    }
    // Inline code spans hold no links either.
    return line.replace(/(`+)[^`]*?\1/g, (span) => " ".repeat(span.length));
  });
}

/** A heading's anchor as GitHub makes it (github-slugger): lower case, punctuation dropped, spaces to `-`. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link keeps its text
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, "").replace(/ /g, "-");
}

/** Every anchor a Markdown file has: its headings' (a repeated one gets `-1`, `-2`…) and explicit `id`s. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const open = /^\s*(```+|~~~+)/.exec(line);
    if (fence) {
      if (open && open[1]!.startsWith(fence)) fence = null;
      continue;
    }
    if (open) {
      fence = open[1]!;
      continue;
    }
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      anchors.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const id of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

/** The relative links of a Markdown file (`[text](target)` and `<img src>`), with their line numbers. */
export function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  withoutCode(markdown).forEach((text, i) => {
    for (const m of text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target: m[1]!, line: i + 1 });
    for (const m of text.matchAll(/<img[^>]*\ssrc="([^"]+)"/g)) links.push({ target: m[1]!, line: i + 1 });
  });
  return links.filter(({ target }) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/**
 * What is wrong with the relative links of `files` (paths under `root`): a file that does
 * not exist, or an anchor its Markdown file does not have. One line per broken link.
 */
export function brokenLinks(root: string, files: string[], read: (path: string) => string, exists: (path: string) => boolean = existsSync): string[] {
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (path: string) => {
    if (!anchors.has(path)) anchors.set(path, anchorsOf(read(path)));
    return anchors.get(path)!;
  };
  const broken: string[] = [];
  for (const file of files) {
    for (const { target, line } of linksOf(read(file))) {
      const [pathPart, anchor] = target.split("#", 2) as [string, string | undefined];
      const path = pathPart === "" ? file : join(dirname(file), decodeURIComponent(pathPart));
      const where = `${relative(root, file)}:${line}: ${target}`;
      if (!exists(path)) {
        broken.push(`${where} (no file ${relative(root, path)})`);
        continue;
      }
      if (anchor !== undefined && path.endsWith(".md") && !anchorsIn(path).has(decodeURIComponent(anchor))) {
        broken.push(`${where} (no heading #${anchor} in ${relative(root, path)})`);
      }
    }
  }
  return broken;
}

/** The Markdown files of a folder, its subfolders included. */
export function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return markdownFiles(path);
    return name.endsWith(".md") ? [path] : [];
  });
}

/** The tables of a Markdown file: each its header cells and its rows' cells (inline code and emphasis dropped). */
export function tablesOf(markdown: string): { header: string[]; rows: string[][]; line: number }[] {
  const lines = markdown.split("\n");
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\||\|$/g, "")
      .split("|")
      .map((cell) => cell.replace(/[`*]/g, "").trim());
  const tables: { header: string[]; rows: string[][]; line: number }[] = [];
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i]!.trim().startsWith("|") || !/^\s*\|?\s*:?-{3,}/.test(lines[i + 1]!)) continue;
    const table = { header: cells(lines[i]!), rows: [] as string[][], line: i + 1 };
    let j = i + 2;
    for (; j < lines.length && lines[j]!.trim().startsWith("|"); j++) table.rows.push(cells(lines[j]!));
    tables.push(table);
    i = j;
  }
  return tables;
}
