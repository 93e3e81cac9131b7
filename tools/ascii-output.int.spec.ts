import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { asciiFiles, asciiOutput } from './ascii-output.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const NON_ASCII = /[^\x00-\x7f]/;

describe('the bundles kept to ASCII', () => {
  it('given non-ASCII characters in comments, when rewritten, then each UTF-16 unit is one ? at the same place and the code is untouched', async () => {
    const code = [
      '// the call — accepted',
      'const arrow = "\\u2192"; /* → and … and 😀 */ export const x = arrow;',
      '/**',
      ' * Übergabe: déjà vu',
      ' */',
      'export function f() { return `${arrow}\\u00e9`; }',
      '',
    ].join('\n');
    const output = await asciiOutput(code);
    expect(output.kept).toBeUndefined();
    expect(NON_ASCII.test(output.code)).toBe(false);
    expect(output.code).toHaveLength(code.length);
    expect(output.code.split('\n').map((line) => line.length)).toEqual(code.split('\n').map((line) => line.length));
    expect(output.code).toContain('// the call ? accepted');
    expect(output.code).toContain('/* ? and ? and ?? */');
    expect(output.code).toContain(' * ?bergabe: d?j? vu');
  });

  it.each([
    ['a string', 'export const s = "a — b";\n'],
    ['a template', 'export const t = `a — b`;\n'],
    ['a regular expression', 'export const r = /é+/u;\n'],
    ['a name', 'export const café = 1;\n'],
  ])('given a non-ASCII character in %s, when rewritten, then the code is kept as it was and the reason says where', async (_where, code) => {
    const output = await asciiOutput(code);
    expect(output.code).toBe(code);
    expect(output.kept).toMatch(/^a non-ASCII character outside the comments, near: /);
  });

  it('given ASCII code, when rewritten, then it is returned as it is', async () => {
    const code = 'export const s = "\\u2014"; // plain\n';
    expect(await asciiOutput(code)).toEqual({ code });
  });

  it('given scripts in a folder, when rewritten in place, then the one with non-ASCII comments is rewritten and the one kept as it was is named with where', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'oncegate-ascii-'));
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      writeFileSync(join(folder, 'comments.js'), '// a — b\nexport const x = 1;\n');
      writeFileSync(join(folder, 'string.js'), 'export const s = "a — b";\n');
      await asciiFiles([join(folder, 'comments.js'), join(folder, 'string.js')], folder);
      expect(readFileSync(join(folder, 'comments.js'), 'utf8')).toBe('// a ? b\nexport const x = 1;\n');
      expect(readFileSync(join(folder, 'string.js'), 'utf8')).toBe('export const s = "a — b";\n');
      expect(stderr.mock.calls.map(([text]) => String(text))).toEqual([
        expect.stringMatching(/^string\.js is not ASCII-only, so its source takes two bytes a character in memory: a non-ASCII character outside the comments, near: /),
      ]);
    } finally {
      stderr.mockRestore();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('given the built apps, when their scripts are read, then every one is ASCII (Node keeps each at one byte per character)', () => {
    const apps = join(ROOT, 'dist', 'apps');
    const scripts = readdirSync(apps).flatMap((app) =>
      app === 'console' ? [] : readdirSync(join(apps, app)).filter((name) => name.endsWith('.js')).map((name) => join(apps, app, name)),
    );
    expect(scripts.length).toBeGreaterThanOrEqual(10);
    expect(scripts.some((script) => script.endsWith(join('oncegate', 'main.js')))).toBe(true);
    const notAscii = scripts.filter((script) => NON_ASCII.test(readFileSync(script, 'utf8')));
    expect(notAscii).toEqual([]);
  });
});
