// `npm run soak` flags, apart from the script so that a test can check them against the docs.
import { parseArgs } from 'node:util';

export const SOAK_OPTIONS = {
  quick: { type: 'boolean', default: false },
  agents: { type: 'string', default: '500' },
  rate: { type: 'string', default: '300' },
  duration: { type: 'string' },
  deadline: { type: 'string', default: '5' },
  watches: { type: 'string', default: '20' },
  json: { type: 'string' },
};

export const SOAK_USAGE =
  'usage: npm run soak -- [--quick] [--agents N≥4] [--rate R] [--duration S] [--deadline S] [--watches N] [--json FILE]';

/** The run's settings from argv, or an Error naming what is wrong. */
export function parseSoakArgs(argv) {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: SOAK_OPTIONS }));
  } catch (err) {
    return new Error(`${err.message}\n${SOAK_USAGE}`);
  }
  const settings = {
    quick: values.quick,
    agents: Number(values.agents),
    rate: Number(values.rate),
    durationMs: Number(values.duration ?? (values.quick ? 60 : 600)) * 1000,
    deadlineMs: Number(values.deadline) * 1000,
    watches: Number(values.watches),
    json: values.json,
  };
  const numbers = [settings.agents, settings.rate, settings.durationMs, settings.deadlineMs];
  if (!numbers.every((n) => Number.isFinite(n) && n > 0) || settings.agents < 4 || !(settings.watches >= 1))
    return new Error(SOAK_USAGE);
  return settings;
}
