import type { LineRow, LineVersion, Storage } from "../db/port";
import { AppError } from "../errors";
import { errorText, type Logger } from "../log";
import type { NetworkDriver } from "../network/driver";
import type { Secrets } from "../secrets/seal";
import { DEFAULT_LINE_ID } from "../vocabulary/lines";
import { buildDriver, envLine, unavailableDriver, type DriverContext } from "./drivers";
import type { LineCredentials, LineSettings } from "./schemas";

/** How often each process looks for lines changed by another (a change reaches every process within 5 s). */
export const LINES_REFRESH_MS = 2_000;

/** A line as a process holds it: the stored row, its settings read, and its live driver. */
export interface Line {
  row: LineRow;
  settings: LineSettings;
  driver: NetworkDriver;
}

/** Whether the line reaches contacts over iMessage (a BlueBubbles line not set to relay SMS). */
export const isImessageLine = (line: Line) => line.row.network === "bluebubbles" && line.settings.service !== "SMS";

/**
 * Every line of the deployment, held in memory with one live driver each, so that a send
 * resolves its line without a query. `refresh` compares the stored versions (one small
 * query) and rebuilds only the drivers of lines that changed; every process calls it every
 * LINES_REFRESH_MS, and the process that made a change at once.
 */
export interface LineRegistry {
  /** Every line, enabled or not, in the order they were created. */
  all(): Line[];
  /** By id or name; undefined when none. */
  find(ref: string): Line | undefined;
  /** By id: the line a stored message or chat is on (a deleted line's id: 404). */
  get(id: string): Line;
  /** The default line. */
  default(): Line;
  /** Reads the lines again when any changed; true when something did. */
  refresh(): Promise<boolean>;
}

export interface RegistryDeps extends DriverContext {
  storage: DriverContext["storage"] & Pick<Storage, "lines">;
  secrets: Secrets;
}

/**
 * Writes the environment's line (NETWORK and its variables) and loads every line. The
 * environment's credentials are never stored: its driver gets them from the environment.
 */
export async function openLines(deps: RegistryDeps): Promise<LineRegistry> {
  const env = envLine(deps.config);
  await deps.storage.lines.putEnvLine({ network: env.network, address: env.address, settings: JSON.stringify(env.settings) });
  let lines: Line[] = [];
  let versions = "";
  // Sorted: `list` (creation order) and `versions` (id order) must give the same key for the same lines.
  const key = (v: LineVersion[]) => v.map((l) => `${l.id}@${l.updatedAt}`).sort().join(",");

  function build(row: LineRow, previous: Line | undefined): Line {
    if (previous && previous.row.updatedAt === row.updatedAt) return previous;
    const settings = JSON.parse(row.settings) as LineSettings;
    const credentials: LineCredentials = row.managed === "env" ? env.credentials : row.credentials ? (JSON.parse(deps.secrets.open(row.credentials)) as LineCredentials) : {};
    return { row, settings, driver: buildDriver(row, settings, credentials, deps) };
  }

  async function load() {
    const rows = await deps.storage.lines.list();
    const before = new Map(lines.map((l) => [l.row.id, l]));
    const next: Line[] = [];
    for (const row of rows) {
      try {
        next.push(build(row, before.get(row.id)));
      } catch (err) {
        // One line that cannot be built (its credentials do not open, a setting this process lacks) must not take the others down: it is listed, and refuses.
        const reason = `the line ${row.name} cannot be used by this process: ${errorText(err)}`;
        deps.log.warn("a line cannot be used by this process; it sends nothing here until that is fixed", { line: row.name, error: errorText(err) });
        next.push({ row, settings: JSON.parse(row.settings) as LineSettings, driver: unavailableDriver(row.network, reason) });
      }
    }
    lines = next;
    versions = key(rows);
  }

  await load();
  const registry: LineRegistry = {
    all: () => lines,
    find: (ref) => lines.find((l) => l.row.id === ref) ?? lines.find((l) => l.row.name === ref),
    get(id) {
      const found = lines.find((l) => l.row.id === id);
      if (!found) throw new AppError("NOT_FOUND", `line: no line ${id}`);
      return found;
    },
    default() {
      return lines.find((l) => l.row.isDefault) ?? lines.find((l) => l.row.id === DEFAULT_LINE_ID) ?? lines[0]!;
    },
    async refresh() {
      const now = key(await deps.storage.lines.versions());
      if (now === versions) return false;
      await load();
      return true;
    },
  };
  return registry;
}
