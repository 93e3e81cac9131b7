import { describe, expect, it } from 'vitest';
import {
  AccessDeniedError,
  ANY,
  NO_STREAM,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnavailableError,
  UnsupportedError,
  WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import { EventStoreOpenError, EventStoreUnavailableError, WrongExpectedRevisionError } from '@oncegate/event-store';
import { isStreamNotFound, isUnavailable, openFailure, unavailableOr, wrongExpectedRevision, wrongExpectedVersionOf } from './kurrentdb-errors';
import { actualRevisionOf, exactStreamState, streamStateOf } from './stream-states';

const refusal = (streamName: string, current: bigint | typeof NO_STREAM) => new WrongExpectedVersionError(undefined, { streamName, expected: 3n, current });

/** A gRPC call's own failure, as @grpc/grpc-js reports a server it cannot reach: a bare error with a status code. */
function grpcUnavailable(): Error {
  return Object.assign(new Error('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1'), {
    code: 14,
    details: 'No connection established',
  });
}

describe('kurrentdb stream states', () => {
  it('given each expected revision of the port, then it names the KurrentDB stream state of the same meaning', () => {
    expect(streamStateOf('any')).toBe(ANY);
    expect(streamStateOf('no_stream')).toBe(NO_STREAM);
    expect(streamStateOf('stream_exists')).toBe(STREAM_EXISTS);
    expect(streamStateOf(0)).toBe(0n);
    expect(streamStateOf(41)).toBe(41n);
  });

  it('given a stream’s last revision, then an append names exactly that revision, or no stream', () => {
    expect(exactStreamState(undefined)).toBe(NO_STREAM);
    expect(exactStreamState(0)).toBe(0n);
    expect(exactStreamState(12)).toBe(12n);
  });

  it('given the state a refusal reports, then the port’s actual revision is a number, or undefined for no stream, a deleted or a tombstoned one', () => {
    expect(actualRevisionOf(5n)).toBe(5);
    expect(actualRevisionOf(NO_STREAM)).toBeUndefined();
    expect(actualRevisionOf(-5n)).toBeUndefined();
    expect(actualRevisionOf(-6n)).toBeUndefined();
  });
});

describe('kurrentdb errors as the port’s', () => {
  it('given a WrongExpectedVersion the server found against the caller’s expectation, then it is the port’s WrongExpectedRevisionError with stream, expected and actual', () => {
    const error = wrongExpectedRevision(refusal('oncegate:s', 4n), 's', 3);
    expect(error).toBeInstanceOf(WrongExpectedRevisionError);
    expect(error).toMatchObject({ kind: 'wrong_expected_revision', streamId: 's', expected: 3, actual: 4 });
    expect(wrongExpectedRevision(refusal('oncegate:s', NO_STREAM), 's', 'stream_exists')).toMatchObject({ expected: 'stream_exists', actual: undefined });
    expect(wrongExpectedRevision(refusal('oncegate:s', 0n), 's', 'no_stream')).toMatchObject({ expected: 'no_stream', actual: 0 });
  });

  it('given a WrongExpectedVersion on a stream whose state the caller’s expectation accepts, then it is no answer for the caller: the store reads again', () => {
    expect(wrongExpectedRevision(refusal('oncegate:s', 4n), 's', 'any')).toBeUndefined();
    expect(wrongExpectedRevision(refusal('oncegate:s', 4n), 's', 'stream_exists')).toBeUndefined();
    expect(wrongExpectedRevision(refusal('oncegate:s', 4n), 's', 4)).toBeUndefined();
  });

  it('given the client’s refusal, typed or as a bare error, then it is found; other errors are not refusals', () => {
    expect(wrongExpectedVersionOf(refusal('oncegate~log', 9n))?.streamName).toBe('oncegate~log');
    expect(wrongExpectedVersionOf(new Error('boom'))).toBeUndefined();
    expect(wrongExpectedVersionOf(new UnavailableError(undefined, 'down'))).toBeUndefined();
  });

  it('given an unreachable server, whether the native reads or the gRPC append report it, then it is EventStoreUnavailableError naming the store', () => {
    for (const error of [new UnavailableError(undefined, 'down'), grpcUnavailable()]) {
      expect(isUnavailable(error)).toBe(true);
      const translated = unavailableOr('kurrentdb://localhost:2113 (namespace oncegate)', error);
      expect(translated).toBeInstanceOf(EventStoreUnavailableError);
      expect((translated as EventStoreUnavailableError).message).toContain('kurrentdb://localhost:2113 (namespace oncegate)');
      expect((translated as EventStoreUnavailableError).message).toContain('nothing was written');
    }
  });

  it('given an error that is not about reaching the server, then it stays as it is', () => {
    const bug = new TypeError('a bug');
    expect(unavailableOr('here', bug)).toBe(bug);
    expect(unavailableOr('here', refusal('oncegate:s', 1n))).toBeInstanceOf(WrongExpectedVersionError);
    expect(isStreamNotFound(new StreamNotFoundError(undefined, 'oncegate:s'))).toBe(true);
    expect(isStreamNotFound(new UnavailableError(undefined, 'down'))).toBe(false);
  });

  it('given failures at open, then an unreachable server is unavailable, refused credentials or an old server cannot open, saying what to do', () => {
    expect(openFailure('here', grpcUnavailable())).toBeInstanceOf(EventStoreUnavailableError);
    const denied = openFailure('here', new AccessDeniedError(undefined, 'access denied'));
    expect(denied).toBeInstanceOf(EventStoreOpenError);
    expect(denied).toMatchObject({ kind: 'store_open_failed', problem: 'cannot_open' });
    const old = openFailure('here', new UnsupportedError('multiStreamAppend', '25.1')) as EventStoreOpenError;
    expect(old).toMatchObject({ kind: 'store_open_failed', problem: 'cannot_open' });
    expect(old.detail).toMatch(/no multi-stream append, which every append of the store needs .* use KurrentDB 25\.1 or later/);
  });
});
