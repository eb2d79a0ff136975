/** Calls `probe` every 50 ms until `done` holds of its value, which it returns; fails naming `what` and the last value after `timeoutMs`. */
export async function poll<T>(probe: () => Promise<T> | T, done: (value: T) => boolean, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}; last seen: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
