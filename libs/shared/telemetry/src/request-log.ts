import type { Logger } from 'pino';

/** What one request logs through: a child logger with the request's bindings, made on first use. */
export interface RequestLog {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * Most requests log nothing at the running level, and building a pino child (its bindings
 * serialised) for each one was a tenth of an agent's CPU per request: the child is made only
 * when a line is written, and debug lines cost one level check when debug is off.
 */
export function requestLog(parent: Logger, bindings: () => Record<string, unknown>): RequestLog {
  let child: Logger | undefined;
  const get = () => {
    child ??= parent.child(bindings());
    return child;
  };
  return {
    debug: (obj, msg) => {
      if (parent.isLevelEnabled('debug')) get().debug(obj, msg);
    },
    info: (obj, msg) => {
      if (parent.isLevelEnabled('info')) get().info(obj, msg);
    },
    warn: (obj, msg) => get().warn(obj, msg),
    error: (obj, msg) => get().error(obj, msg),
  };
}
