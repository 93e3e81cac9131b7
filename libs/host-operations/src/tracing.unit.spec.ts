import { trace } from '@opentelemetry/api';
import { describe, expect, it, vi } from 'vitest';
import { inSpan } from './tracing';

describe('inSpan', () => {
  it('given no tracing started, then the work runs with a span that records nothing, and no span is started', async () => {
    const getTracer = vi.spyOn(trace, 'getTracer');
    try {
      const seen = await inSpan('tools/call set_config', { attributes: { 'oncegate.tool': 'set_config' } }, async (span) => {
        span.setAttributes({ 'oncegate.match': 'new' });
        return { recording: span.isRecording(), traceId: span.spanContext().traceId };
      });
      expect(seen).toEqual({ recording: false, traceId: '00000000000000000000000000000000' });
      await expect(inSpan('attempt http', {}, async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused');
      const throwing = () => {
        throw new Error('thrown before any promise');
      };
      await expect(inSpan('attempt http', {}, throwing)).rejects.toThrow('thrown before any promise');
      expect(getTracer).not.toHaveBeenCalled();
    } finally {
      getTracer.mockRestore();
    }
  });
});
