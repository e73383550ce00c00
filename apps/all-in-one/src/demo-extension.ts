import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExtensionExecutor, ExtensionRegistry } from '@pullplane/agent-core';
import type { LogicalStream } from '@pullplane/tunnel';
import type { Logger } from 'pino';

/** The demo extension's name: Argo CD would call it at /extensions/hello. */
export const DEMO_EXTENSION = 'hello';

/**
 * What a demo agent serves as a proxy extension: a small HTTP app "inside its cluster" that
 * says which cluster answered and what Argo CD told it, and the agent-side map and executor
 * that reach it. In a real cluster the map names a Service (Grafana, a cost API…).
 */
export interface DemoExtension {
  handle(stream: LogicalStream): void;
  stop(): Promise<void>;
}

export async function startDemoExtension(agent: string, logger: Logger): Promise<DemoExtension> {
  const server = http.createServer((req, res) => {
    const h = req.headers;
    res.setHeader('content-type', 'application/json');
    res.end(
      `${JSON.stringify({
        cluster: agent,
        extension: DEMO_EXTENSION,
        path: req.url,
        argocd: {
          application: h['argocd-application-name'],
          project: h['argocd-project-name'],
          user: h['argocd-username'],
          groups: h['argocd-user-groups'],
        },
        message: `hello from inside ${agent}, through its tunnel`,
      })}\n`,
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const registry = new ExtensionRegistry({
    inline: `extensions:\n  - name: ${DEMO_EXTENSION}\n    url: http://127.0.0.1:${port}/\n`,
    logger: logger.child({ component: 'demo-extensions', agent }),
  });
  await registry.start();
  const executor = new ExtensionExecutor({ registry, agentName: agent, logger: logger.child({ agent }) });
  return {
    handle: (s) => executor.handle(s),
    async stop() {
      registry.stop();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
