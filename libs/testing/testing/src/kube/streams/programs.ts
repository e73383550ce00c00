import { SYSTEM_COMMANDS } from './commands-system.js';
import { TEXT_COMMANDS } from './commands-text.js';
import type { Program } from './process-io.js';
import { programName, shProgram } from './shell.js';
import { tar } from './tar-command.js';

/**
 * Every command a fake container can run, by name. The same set everywhere: a container's image
 * does not change what it has (see the README of @pullplane/testing for the list).
 */
const PROGRAMS = new Map<string, Program>([
  ...Object.entries(TEXT_COMMANDS),
  ...Object.entries(SYSTEM_COMMANDS),
  ['tar', tar],
]);
const sh = shProgram((name) => PROGRAMS.get(name));
PROGRAMS.set('sh', sh);
PROGRAMS.set('ash', sh);
PROGRAMS.set('bash', sh);

/** The program `argv0` names (`ls`, `/bin/ls`), or undefined when the container has none. */
export function findProgram(argv0: string): Program | undefined {
  const name = programName(argv0);
  return name === undefined ? undefined : PROGRAMS.get(name);
}
