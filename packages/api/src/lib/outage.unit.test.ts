import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.ts';
import { errorBody } from '../trpc.ts';
import { DatabaseOutage, isDatabaseUnreachable } from './outage.ts';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDatabaseUnreachable', () => {
  it('knows a database that cannot be reached or went away', () => {
    for (const error of [
      withCode('ECONNREFUSED'),
      withCode('ECONNRESET'),
      withCode('ETIMEDOUT'),
      withCode('57P01', 'terminating connection due to administrator command'),
      withCode('57P03', 'the database system is starting up'),
      withCode('08006'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('wrapped'), { cause: withCode('ECONNREFUSED') }),
      new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')], ''),
      new AppError('service_unavailable', 'Rate limiting is unavailable', undefined, undefined, withCode('ECONNREFUSED')),
    ]) {
      expect(isDatabaseUnreachable(error), String(error)).toBe(true);
    }
  });

  it('does not take a wrong statement, a conflict or a bug for an outage', () => {
    for (const error of [
      withCode('42601', 'syntax error'),
      withCode('23505', 'duplicate key'),
      withCode('40001', 'could not serialize'),
      new TypeError('cannot read properties of undefined'),
      new AppError('invalid_token', 'no'),
      new AppError('service_unavailable', 'a provider is down'),
      'a string',
      undefined,
      null,
    ]) {
      expect(isDatabaseUnreachable(error), String(error)).toBe(false);
    }
    expect(errorBody(new UniqueConstraintViolationException(withCode('23505'))).code).toBe('conflict');
  });

  it('maps to 503 service_unavailable, never with the driver message', () => {
    const body = errorBody(withCode('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:5432'));
    expect(body.code).toBe('service_unavailable');
    expect(body.message).not.toContain('10.0.0.5');
    expect(errorBody(new Error('boom')).code).toBe('internal_error');
  });
});

describe('DatabaseOutage', () => {
  it('logs an outage once when it starts and once when a probe finds the database back', async () => {
    const lines: Array<{ level: string; msg: string; obj: object }> = [];
    const log = {
      warn: (obj: object, msg = '') => lines.push({ level: 'warn', msg, obj }),
      info: (obj: object, msg = '') => lines.push({ level: 'info', msg, obj }),
    };
    let up = false;
    let probes = 0;
    const outage = new DatabaseOutage(
      log,
      async () => {
        probes++;
        if (!up) throw withCode('ECONNREFUSED');
      },
      20,
    );
    try {
      for (let i = 0; i < 50; i++) outage.report(withCode('ECONNREFUSED', 'connect ECONNREFUSED secret-host:5432'));
      expect(outage.absorb(withCode('ECONNREFUSED'))).toBe(true);
      expect(outage.absorb(new Error('a bug'))).toBe(false);
      expect(outage.active).toBe(true);
      // The first probe confirms it: one line.
      await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(1);
      expect(lines.map((l) => l.level)).toEqual(['warn']);
      expect(JSON.stringify(lines)).not.toContain('secret-host');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(probes).toBeGreaterThan(1);
      expect(lines).toHaveLength(1);
      up = true;
      await expect.poll(() => outage.active, { timeout: 10_000 }).toBe(false);
      expect(lines.map((l) => [l.level, l.msg])).toEqual([
        ['warn', 'database unreachable: answering 503 service_unavailable until it is back'],
        ['info', 'database reachable again'],
      ]);
      expect(lines[1]?.obj).toMatchObject({ refused: 50 });
      // A new outage is a new pair of lines; the probing stops in between.
      const idle = probes;
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(probes).toBe(idle);
      up = false;
      outage.report(withCode('57P01'));
      await expect.poll(() => lines.length, { timeout: 10_000 }).toBe(3);
    } finally {
      outage.close();
    }
  });

  it('a failure the first probe does not confirm (a connection cut under one request) is not logged', async () => {
    const lines: string[] = [];
    const log = { warn: (_: object, msg = '') => lines.push(msg), info: (_: object, msg = '') => lines.push(msg) };
    const outage = new DatabaseOutage(log, async () => undefined, 20);
    try {
      outage.report(new Error('Connection terminated unexpectedly'));
      expect(outage.active).toBe(true);
      await expect.poll(() => outage.active, { timeout: 10_000 }).toBe(false);
      expect(lines).toEqual([]);
    } finally {
      outage.close();
    }
  });
});
