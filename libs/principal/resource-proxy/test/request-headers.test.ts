import { describe, expect, it } from 'vitest';
import { isStreaming } from '../src/request-headers.js';

describe('isStreaming', () => {
  it.each([
    ['/api/v1/namespaces/a/pods/b', false],
    ['/api/v1/pods?watch=true', true],
    ['/api/v1/pods?limit=500&watch=1', true],
    ['/api/v1/pods?watch=false', false],
    ['/api/v1/watch/pods', true],
    ['/api/v1/watch/pods?labelSelector=a', true],
    ['/api/v1/namespaces/a/pods/b/log?follow=true', true],
    ['/api/v1/namespaces/a/pods/b/log', false],
    ['/api/v1/namespaces/a/pods/b/log?follow=false', false],
    ['/api/v1/namespaces/a/pods/b/logs?follow=true', false],
    ['/api/v1/namespaces/a/configmaps/log', false],
  ])('%s: %s', (path, streaming) => {
    expect(isStreaming(path)).toBe(streaming);
  });
});
