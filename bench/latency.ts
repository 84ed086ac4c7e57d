// Latency measurement shared by the bench rows and their floors.

export const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * p) - 1)];
};

/** `n` sequential calls after `warm` unmeasured ones: calls per second and latency percentiles. */
export async function latencies(
  fn: (i: number) => Promise<unknown>,
  n: number,
  warm: number,
): Promise<{ itemsPerSec: number; p50Ms: number; p99Ms: number; p999Ms: number }> {
  for (let i = 0; i < warm; i++) await fn(i);
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn(warm + i);
    lat.push(performance.now() - t0);
  }
  return {
    itemsPerSec: n / (lat.reduce((a, b) => a + b, 0) / 1000),
    p50Ms: pct(lat, 0.5),
    p99Ms: pct(lat, 0.99),
    p999Ms: pct(lat, 0.999),
  };
}
