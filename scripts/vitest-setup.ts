import { afterAll, beforeEach, expect } from 'vitest';
// The same module the tests reach through @pullplane/testing (one instance per test file).
import { releaseTestResources } from '../libs/testing/testing/src/launchers/processes.js';

// A test that asserts nothing cannot fail. expectTypeOf does not count (the typecheck target
// checks it); where assertions sit in callbacks, a test states how many with expect.assertions(n).
beforeEach(() => {
  expect.hasAssertions();
});

// After the file's own teardown (hooks run in reverse order of registration): a server it left
// running is killed, and the temporary directories it made (NATS stores, kubeconfigs, caches) go.
afterAll(async () => {
  await releaseTestResources();
});
