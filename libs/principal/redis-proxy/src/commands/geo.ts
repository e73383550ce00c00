import { ALL_ARGS, type CommandSpec, FIRST_KEY, keyRange } from './spec.js';

/** Redis' geospatial commands: principal keys only. */
export const GEO_COMMANDS: readonly CommandSpec[] = [
  { name: 'geoadd', keys: FIRST_KEY },
  { name: 'geodist', keys: FIRST_KEY },
  { name: 'geohash', keys: FIRST_KEY },
  { name: 'geopos', keys: FIRST_KEY },
  { name: 'georadius', keys: ALL_ARGS },
  { name: 'georadius_ro', keys: FIRST_KEY },
  { name: 'georadiusbymember', keys: ALL_ARGS },
  { name: 'georadiusbymember_ro', keys: FIRST_KEY },
  { name: 'geosearch', keys: FIRST_KEY },
  { name: 'geosearchstore', keys: keyRange(1, 2) },
];
