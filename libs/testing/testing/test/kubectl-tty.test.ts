import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectlOnTerminal } from '../src/index.js';
import { eventually, type KubeFixture, startKubeFixture } from './kube-helpers.js';
import { runningPod } from './support/stream-clients.js';

/**
 * `kubectl exec -it` and `attach -it` need a terminal: util-linux `script` gives kubectl a
 * pseudo-terminal of a set size, so the real client sends its terminal size and keystrokes.
 */
const onTerminal = (kube: KubeFixture, args: string[], env: Record<string, string>) =>
  kubectlOnTerminal(args, { kubeconfig: kube.kubeconfig, env });

describe.each([
  { name: 'WebSocket v5', env: {} },
  { name: 'SPDY/3.1', env: { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' } },
])('kubectl on a terminal over $name', ({ env }) => {
  let kube: KubeFixture;
  beforeAll(async () => {
    kube = await startKubeFixture({ gitVersion: 'v1.32.4' });
    kube.server.store.put(runningPod('tty', 'box'));
    kube.server.store.put(runningPod('tty', 'console', { tty: true }));
  });
  afterAll(() => kube.server.close());

  it('exec -it: the terminal size reaches the process, keys are echoed, the exit code comes back', async () => {
    const t = onTerminal(kube, ['-n', 'tty', 'exec', '-it', 'box', '--', 'sh'], env);
    try {
      await eventually(() => expect(t.shown()).toContain('/ # '), 20_000);
      t.type('stty size\r');
      await eventually(() => expect(t.shown()).toContain('stty size\r\n22 111\r\n'), 20_000);
      t.type('exit 4\r');
      expect(await t.exited).toBe(4);
      expect(t.shown()).toContain('command terminated with exit code 4');
    } finally {
      t.kill();
    }
    const session = kube.server.streamSessions().at(-1)!;
    expect(session).toMatchObject({ tty: true, exitCode: 4 });
    expect(session.resizes[0]).toEqual({ width: 111, height: 22 });
  });

  it('attach -it to a container with a terminal', async () => {
    const t = onTerminal(kube, ['-n', 'tty', 'attach', '-it', 'console'], env);
    try {
      await eventually(
        () => expect(t.shown()).toContain("If you don't see a command prompt, try pressing enter."),
        20_000,
      );
      t.type('hello tty\r');
      await eventually(() => expect(t.shown()).toContain('hello tty\r\nhello tty\r\n'), 20_000);
      // kubectl attach sends the size plus one first, to make the far side redraw, then the size.
      await eventually(() =>
        expect(kube.server.streamSessions().at(-1)?.resizes).toEqual([
          { width: 112, height: 23 },
          { width: 111, height: 22 },
        ]),
      );
    } finally {
      t.kill();
    }
  });
});
