import { describe, expect, it } from 'vitest';
import { statementShape } from './sql-text';

describe('statementShape (how the SQL channel reads a statement text)', () => {
  it.each([
    ['UPDATE prices SET cents = $1 WHERE sku = $2', 2, false, 'UPDATE'],
    ["SELECT '$1; DROP TABLE x' FROM t WHERE a = $1", 1, false, 'SELECT'],
    ['SELECT "we;ird$3" FROM t WHERE a = $2 AND b = $1', 2, false, 'SELECT'],
    ['SELECT $tag$ $9; $tag$ WHERE a = $1', 1, false, 'SELECT'],
    ['SELECT 1 -- $5;\nWHERE a = $1', 1, false, 'SELECT'],
    ['SELECT /* $7; /* nested $8 */ */ $1', 1, false, 'SELECT'],
    ["SELECT E'it\\'s $4;' , $1", 1, false, 'SELECT'],
    ['INSERT INTO t VALUES ($1);', 1, false, 'INSERT'],
    ['INSERT INTO t VALUES ($1); -- done', 1, false, 'INSERT'],
    ['UPDATE t SET a = 1; DELETE FROM t', 0, true, 'UPDATE'],
    ['  with x as (select 1) select * from x', 0, false, 'WITH'],
    ['SELECT a$1 FROM t', 0, false, 'SELECT'],
    // A carriage return ends a line comment, as it does for PostgreSQL.
    ['UPDATE t SET a = 1; --x\rCOMMIT', 0, true, 'UPDATE'],
    // `$` after an identifier character (a `$` or a letter beyond ASCII) continues the identifier.
    ['SELECT 1 AS a$$$; COMMIT; DELETE FROM payments; SELECT 1 AS b$$$', 0, true, 'SELECT'],
    ['SELECT 1 AS é$1', 0, false, 'SELECT'],
  ])('%j: highest $%s, several statements %s, first word %s', (text, highest, several, first) => {
    const shape = statementShape(text);
    expect(shape.highestParameter).toBe(highest);
    expect(shape.severalStatements).toBe(several);
    expect(shape.firstWord).toBe(first);
    expect(shape.unterminated).toBeUndefined();
  });

  it.each([
    ["SELECT 'open", 'a quoted string'],
    ['SELECT "open', 'a quoted identifier'],
    ['SELECT $$ open', 'a dollar-quoted string'],
    ['SELECT 1 /* open', 'a /* comment'],
  ])('%j is unterminated: %s', (text, what) => {
    expect(statementShape(text).unterminated).toBe(what);
  });
});
