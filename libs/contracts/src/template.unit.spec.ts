import { describe, expect, it } from 'vitest';
import { scanTemplates } from './template';

describe('scanTemplates', () => {
  it('given argument and execution templates, when scanned, then each reference is found', () => {
    expect(scanTemplates('/a/{{args.x}}/{{ args.opts.dry_run }}/{{execution.id}}')).toEqual({
      references: [
        { kind: 'argument', argument: 'x' },
        { kind: 'argument', argument: 'opts.dry_run' },
        { kind: 'execution_id' },
      ],
      problems: [],
      whole: undefined,
    });
  });

  it('given a string that is exactly one template, when scanned, then it is the whole value', () => {
    expect(scanTemplates('{{args.count}}').whole).toEqual({ kind: 'argument', argument: 'count' });
    expect(scanTemplates('n={{args.count}}').whole).toBeUndefined();
  });

  it('given unknown or unbalanced templates, when scanned, then each is a problem', () => {
    expect(scanTemplates('{{env.HOME}} {{args.x').problems).toEqual([
      "unknown template '{{env.HOME}}'; use {{args.<name>}} or {{execution.id}}",
      "unbalanced '{{' or '}}' in '{{env.HOME}} {{args.x'",
    ]);
  });
});
