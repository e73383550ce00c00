import type { RouteOpenInit } from '@pullplane/router';
import type { TunnelStream } from '@pullplane/tunnel';

/**
 * Where a front opens its streams: the router to the gateways' links, or in one process a
 * router whose gateway is local. The front never knows which.
 */
export interface StreamOpener {
  open(agent: string, init: RouteOpenInit): TunnelStream;
}

/** What the agent is asked: the head of the Open. */
export type OpenHead = NonNullable<RouteOpenInit['head']>;
