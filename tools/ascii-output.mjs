// The bundles' text kept to ASCII, so that V8 holds each one at one byte per character instead of two.
//
// Node reads an ES module's file into a string of one byte per character only when every character is ASCII: one em
// dash anywhere makes the whole source two bytes a character, and a bundle's source stays in the heap for the process's
// life (the gateway's, about 7 MB: 13.5 MiB instead of 6.8). esbuild escapes every non-ASCII character of strings,
// templates, regular expressions and names (its default `charset: 'ascii'`) but copies the comments it keeps as they
// were written, so what is left is in comments. Each non-ASCII UTF-16 unit is replaced by `?`, one unit for one, so
// every column of the source map stays where it was.
import { transform } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

/**
 * The code with its non-ASCII characters replaced, if they were all in comments: the same code without its comments
 * (esbuild's whitespace minifier drops them) must read alike before and after. Otherwise the code as it was, with
 * `kept` saying why.
 */
export async function asciiOutput(code) {
  if (!/[^\x00-\x7f]/.test(code)) return { code };
  const ascii = code.replace(/[^\x00-\x7f]/g, '?');
  const withoutComments = async (text) =>
    (await transform(text, { format: 'esm', platform: 'node', target: 'node24', minifyWhitespace: true, legalComments: 'none' })).code;
  // The rewritten code may not even parse, when a name held the character.
  const [before, after] = await Promise.all([withoutComments(code), withoutComments(ascii).catch(() => '')]);
  if (before !== after) {
    let at = 0;
    while (at < before.length && before[at] === after[at]) at += 1;
    return { code, kept: `a non-ASCII character outside the comments, near: ${before.slice(Math.max(0, at - 40), at + 40)}` };
  }
  return { code: ascii };
}

/**
 * Rewrites each script in place (`asciiOutput`); one that is kept as it was is named on standard error, with where,
 * by its path from `from`.
 */
export async function asciiFiles(files, from) {
  await Promise.all(
    files.map(async (file) => {
      const output = await asciiOutput(readFileSync(file, 'utf8'));
      if (output.kept === undefined) writeFileSync(file, output.code);
      else process.stderr.write(`${relative(from, file)} is not ASCII-only, so its source takes two bytes a character in memory: ${output.kept}\n`);
    }),
  );
}
