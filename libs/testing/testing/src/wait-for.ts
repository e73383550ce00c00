/**
 * Polls `cond` until it holds: for state a test can only observe by asking (metrics, a router's
 * table, a process's flag), never to show that something did not happen. Fails after `timeoutMs`.
 */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
  intervalMs = 20,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs)); // wait-ok: poll interval of a loop that waits for the event under a deadline
  }
}
