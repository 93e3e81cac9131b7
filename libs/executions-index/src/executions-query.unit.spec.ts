import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, InvalidExecutionsQueryError, parseExecutionsQuery } from './executions-query';

const NOW = Date.parse('2026-07-22T12:00:00.000Z');

function refusal(parameters: Record<string, string | string[]>): InvalidExecutionsQueryError {
  try {
    parseExecutionsQuery(parameters, NOW);
  } catch (error) {
    if (error instanceof InvalidExecutionsQueryError) return error;
    throw error;
  }
  throw new Error('the query was accepted');
}

describe('reading an executions query', () => {
  it('given the analyst\'s question, every filter is read, states repeated or comma-separated, times relative to now', () => {
    const query = parseExecutionsQuery({ actor: 'agent:payments', class: 'irreversible', state: ['outcome_unknown,needs_review', 'dispatched'], since: '1h', until: '2026-07-22T11:59:00Z' }, NOW);
    expect(query).toEqual({
      actors: ['agent:payments'],
      classes: ['irreversible'],
      states: ['outcome_unknown', 'needs_review', 'dispatched'],
      sinceMs: NOW - 3_600_000,
      untilMs: Date.parse('2026-07-22T11:59:00Z'),
      limit: 50,
    });
  });

  it('given a state the domain does not name, it is refused with the closest one', () => {
    const error = refusal({ state: 'outcome_unknwn' });
    expect(error.parameter).toBe('state');
    expect(error.message).toContain("did you mean 'outcome_unknown'?");
  });

  it('given a class, a time, a limit or a filter that is not one, each is refused naming what to write', () => {
    expect(refusal({ class: 'irreversable' }).message).toContain("did you mean 'irreversible'?");
    expect(refusal({ since: 'yesterday' }).message).toContain('30m, 1h, 2d');
    expect(refusal({ limit: '0' }).message).toContain('from 1 to 1000');
    expect(refusal({ stat: 'failed' }).message).toContain("did you mean 'state'?");
    expect(refusal({ since: '1h', until: '2h' }).parameter).toBe('until');
  });

  it('given a cursor it printed, the same place comes back; any other text is refused', () => {
    const cursor = { acceptedMs: NOW, executionId: 'ex_01J3Z6Y8QK4W5X2V7N9M0P1R2S' };
    expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
    expect(parseExecutionsQuery({ cursor: encodeCursor(cursor) }, NOW).after).toEqual(cursor);
    expect(refusal({ cursor: 'bm9wZQ' }).parameter).toBe('cursor');
  });
});
