import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeTempDir, releaseTestResources, startNatsServer, trackedProcessCount } from '../src/index.js';

describe('releaseTestResources', () => {
  it('kills what is still running and removes every temporary directory, stores included', async () => {
    const dir = makeTempDir('release-check-');
    writeFileSync(join(dir, 'file'), 'x');
    const nats = await startNatsServer();
    expect(nats.isRunning()).toBe(true);
    expect(existsSync(nats.storeDir)).toBe(true);
    expect(trackedProcessCount()).toBeGreaterThan(0);

    await releaseTestResources();

    expect(nats.isRunning()).toBe(false);
    expect(trackedProcessCount()).toBe(0);
    expect(existsSync(dir)).toBe(false);
    expect(existsSync(nats.storeDir)).toBe(false);
    // A second call finds nothing left to do.
    await releaseTestResources();
    expect(trackedProcessCount()).toBe(0);
  });
});
