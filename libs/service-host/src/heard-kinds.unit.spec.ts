import { describe, expect, it } from 'vitest';
import { heardKinds, type ServiceDefinition } from './host';

const service = (name: string, sealedBlobs?: ServiceDefinition['sealedBlobs']): ServiceDefinition => ({
  name,
  ...(sealedBlobs === undefined ? {} : { sealedBlobs }),
  serve: () => Promise.reject(new Error('not started in this test')),
});
const gateway = service('gateway', { opens: ['result'], seals: ['arguments'] });
const authorization = service('authorization', { opens: ['arguments'] });
const dispatcher = service('dispatcher-http', { opens: ['arguments'], seals: ['result'] });
const resultDelivery = service('result-delivery');

describe('the sealed blobs a process hears', () => {
  it('given each service in a process of its own, then each hears the kinds it opens and another process seals', () => {
    expect(heardKinds([gateway])).toEqual(['result']);
    expect(heardKinds([authorization])).toEqual(['arguments']);
    expect(heardKinds([dispatcher])).toEqual(['arguments']);
    expect(heardKinds([resultDelivery])).toEqual([]);
  });

  it('given services grouped in a process, then a kind sealed in it is not heard', () => {
    expect(heardKinds([gateway, authorization, resultDelivery])).toEqual(['result']);
    expect(heardKinds([gateway, authorization, dispatcher, resultDelivery])).toEqual([]);
    expect(heardKinds([authorization, dispatcher])).toEqual(['arguments']);
  });
});
