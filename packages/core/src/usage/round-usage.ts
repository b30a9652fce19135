/**
 * Usage figures as the events report them: four decimals, so a log line or a simulation's JSON reads
 * `0.8125`, not `0.8124999999`. One rounding for the bot's `ChannelCompactor` and `ebb simulate`.
 */
export function roundUsage(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
