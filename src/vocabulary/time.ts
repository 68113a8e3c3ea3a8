/**
 * The clock of message timestamps, in their unit: microseconds since the epoch (other stored
 * times are milliseconds). Date.now() plus the sub-millisecond part of the monotonic clock,
 * so it never strays from the wall clock by a millisecond.
 */
export function microClock(): number {
  return Date.now() * 1000 + Math.floor((performance.now() % 1) * 1000);
}
