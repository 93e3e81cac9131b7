import type { ExecutionState } from '@oncegate/domain';
import type { SealedStore } from '@oncegate/sealed-store';

/** The raw arguments of an accepted call, opened from the sealed store; `undefined` when they are not there. */
export async function openArguments(sealed: SealedStore, state: ExecutionState): Promise<Record<string, unknown> | undefined> {
  const ref = state.accepted?.argumentsRef;
  const blob = ref ? await sealed.open(ref) : undefined;
  return blob === undefined ? undefined : (JSON.parse(blob.plaintext.toString('utf8')) as Record<string, unknown>);
}
