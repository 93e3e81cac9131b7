import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shellQuote } from './shell-quote';

/** What a real POSIX shell makes of `printf %s <quoted>`: the bytes of the one argument it parsed. */
function throughShell(quoted: string): Buffer {
  return execFileSync('/bin/sh', ['-c', `printf %s ${quoted}`]);
}

describe('shellQuote', () => {
  it('given plain text, then it is wrapped in single quotes', () => {
    expect(shellQuote('abc')).toBe("'abc'");
    expect(shellQuote('')).toBe("''");
  });

  it("given a single quote, then it is written as '\\''", () => {
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
  });

  it('given a NUL byte, then it refuses: no argument can carry one', () => {
    expect(() => shellQuote('a\0b')).toThrow(RangeError);
  });

  it.each([
    '; rm -rf /',
    '$(id)',
    '`id`',
    'line one\nline two',
    `both 'single' and "double"`,
    '-n',
    'héllo wörld 日本語 🚀',
    '  spaced  ',
    '*',
    '~',
    '\\n and \\',
    '$HOME ${PATH} !! #',
  ])('given %j, then /bin/sh parses the quoted form back to exactly that one argument', (value) => {
    expect(throughShell(shellQuote(value)).equals(Buffer.from(value, 'utf8'))).toBe(true);
  });

  it('given any text without NUL, then /bin/sh parses the quoted form back to the same bytes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes('\0')), (value) => {
        expect(throughShell(shellQuote(value)).equals(Buffer.from(value, 'utf8'))).toBe(true);
      }),
      { numRuns: 150 },
    );
  });
});
