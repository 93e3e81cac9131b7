/**
 * What the SQL channel needs to know of a statement's text, read the way PostgreSQL's lexer reads it: the `$n`
 * parameters it uses and whether it is one statement. Quoted strings ('…', E'…'), quoted identifiers ("…"),
 * dollar-quoted strings ($tag$…$tag$) and comments (-- …, nested /* … *\/) are skipped, so a `$1` or `;` inside
 * them counts for nothing.
 */
export interface StatementShape {
  /** The highest `$n` the statement uses (0 when none). */
  readonly highestParameter: number;
  /** Every `$n` used, in order of first use. */
  readonly parameters: readonly number[];
  /** A `;` followed by more than white space or comments: the text holds more than one statement. */
  readonly severalStatements: boolean;
  /** The first word, upper case (`UPDATE`, `INSERT`, `WITH`, …). */
  readonly firstWord: string;
  /** A quote or comment left open at the end. */
  readonly unterminated: string | undefined;
}

/** What PostgreSQL reads as part of an identifier: a `$` or `E'` right after one is not the start of anything. */
const IDENTIFIER = /[A-Za-z0-9_$\u0080-\uFFFF]/;

export function statementShape(text: string): StatementShape {
  const used: number[] = [];
  let severalStatements = false;
  let unterminated: string | undefined;
  let sawEnd = false;
  let firstWord = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '-' && next === '-') {
      // A line comment ends at a line feed or a carriage return.
      const end = text.slice(i).search(/[\r\n]/);
      i = end === -1 ? n : i + end + 1;
      continue;
    }
    if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (text[i] === '/' && text[i + 1] === '*') {
          depth += 1;
          i += 2;
        } else if (text[i] === '*' && text[i + 1] === '/') {
          depth -= 1;
          i += 2;
        } else i += 1;
      }
      if (depth > 0) unterminated ??= 'a /* comment';
      continue;
    }
    if (sawEnd && !/\s/.test(c)) severalStatements = true;
    if (c === "'" || c === '"') {
      const escapes = c === "'" && i > 0 && /[eE]/.test(text[i - 1]!) && !IDENTIFIER.test(text[i - 2] ?? ' ');
      i += 1;
      let closed = false;
      while (i < n) {
        if (escapes && text[i] === '\\') {
          i += 2;
          continue;
        }
        if (text[i] === c) {
          if (text[i + 1] === c) {
            i += 2;
            continue;
          }
          closed = true;
          i += 1;
          break;
        }
        i += 1;
      }
      if (!closed) unterminated ??= c === "'" ? 'a quoted string' : 'a quoted identifier';
      continue;
    }
    if (c === '$') {
      const parameter = /^\$(\d+)/.exec(text.slice(i));
      if (parameter !== null && !IDENTIFIER.test(text[i - 1] ?? ' ')) {
        const number = Number(parameter[1]);
        if (!used.includes(number)) used.push(number);
        i += parameter[0].length;
        continue;
      }
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i));
      if (tag !== null && !IDENTIFIER.test(text[i - 1] ?? ' ')) {
        const end = text.indexOf(tag[0], i + tag[0].length);
        if (end === -1) {
          unterminated ??= 'a dollar-quoted string';
          i = n;
        } else i = end + tag[0].length;
        continue;
      }
    }
    if (c === ';') {
      sawEnd = true;
      i += 1;
      continue;
    }
    if (firstWord === '' && /[A-Za-z]/.test(c)) firstWord = /^[A-Za-z_]+/.exec(text.slice(i))![0].toUpperCase();
    i += 1;
  }
  return { highestParameter: used.length === 0 ? 0 : Math.max(...used), parameters: used, severalStatements, firstWord, unterminated };
}
