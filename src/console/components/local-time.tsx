const full = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: "short" });
const dayOnly = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const dayAndYear = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

/** Compact, as message lists show times: today's by the hour, this year's by the day, older ones with the year. */
function compact(date: Date): string {
  const now = new Date();
  if (date.toDateString() === now.toDateString()) return timeOnly.format(date);
  return (date.getFullYear() === now.getFullYear() ? dayOnly : dayAndYear).format(date);
}

/**
 * A server timestamp (ISO 8601, UTC, µs) shown in the viewer's local time; `dateTime` keeps
 * the exact instant, and the title the full local date and time when the text is compact.
 */
export function LocalTime({ value, compact: isCompact = false }: { value: string; compact?: boolean }) {
  const date = new Date(value);
  return (
    <time dateTime={value} title={isCompact ? full.format(date) : undefined}>
      {isCompact ? compact(date) : full.format(date)}
    </time>
  );
}
