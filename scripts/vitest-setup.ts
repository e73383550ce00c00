import { beforeEach, expect } from 'vitest';

// A test that asserts nothing cannot fail. expectTypeOf does not count (the typecheck target
// checks it); where assertions sit in callbacks, a test states how many with expect.assertions(n).
beforeEach(() => {
  expect.hasAssertions();
});
