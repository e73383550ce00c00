import { formatDuration } from './duration.js';
import type { OptionDef } from './option-types.js';

/** `<port>`, `<trace|debug|…>`, or '' for booleans: the value hint shown after a flag. */
export function placeholderOf(opt: OptionDef): string {
  if (opt.placeholder !== undefined) return opt.placeholder;
  switch (opt.type) {
    case 'boolean':
      return '';
    case 'enum':
      return `<${opt.values.join('|')}>`;
    case 'list':
      return '<a,b,...>';
    case 'host-port':
      return '<host:port>';
    case 'file':
      return opt.kind === 'directory' ? '<dir>' : '<path>';
    default:
      return `<${opt.type}>`;
  }
}

/** Human-readable default, `undefined` when there is none worth showing; secrets are masked. */
export function defaultOf(opt: OptionDef): string | undefined {
  if (opt.type === 'boolean') return String(opt.default ?? false);
  const d = opt.default;
  if (d === undefined) return undefined;
  if (opt.secret) return '[redacted]';
  if (opt.type === 'list') return Array.isArray(d) && d.length > 0 ? d.join(',') : undefined;
  if (opt.type === 'duration' && typeof d === 'number') return formatDuration(d);
  if (typeof d === 'string') return d === '' ? '""' : d;
  return String(d);
}

/** Constraints worth telling the operator: allowed values, ranges. */
export function constraintsOf(opt: OptionDef): string | undefined {
  const show = (v: number | string) => (typeof v === 'number' ? formatDuration(v) : v);
  switch (opt.type) {
    case 'int':
      if (opt.min !== undefined && opt.max !== undefined) return `${opt.min} to ${opt.max}`;
      if (opt.min !== undefined) return `at least ${opt.min}`;
      if (opt.max !== undefined) return `at most ${opt.max}`;
      return undefined;
    case 'port':
      return '0 to 65535';
    case 'duration': {
      const parts = [];
      if (opt.min !== undefined) parts.push(`at least ${show(opt.min)}`);
      if (opt.max !== undefined) parts.push(`at most ${show(opt.max)}`);
      return parts.length > 0 ? `Go duration, ${parts.join(', ')}` : 'Go duration, e.g. 30s or 1m30s';
    }
    case 'enum':
      return `one of ${opt.values.join(', ')}`;
    case 'url':
      return opt.schemes ? `${opt.schemes.join(' or ')} URL` : undefined;
    case 'file':
      return `must exist`;
    default:
      return undefined;
  }
}
