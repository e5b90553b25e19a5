import { describe, expect, it } from 'vitest';
import { type EntityManager, requestEntityManager } from './orm.ts';

/** The part of an entity manager the request's one uses, with a count of its forks (each fork its own object). */
class FakeEntityManager {
  static forks = 0;
  readonly connection = { name: 'the one connection' };
  transaction = false;
  label = 'root';
  fork(): FakeEntityManager {
    FakeEntityManager.forks++;
    const fork = new FakeEntityManager();
    fork.label = `fork ${FakeEntityManager.forks}`;
    return fork;
  }
  getConnection() {
    return this.connection;
  }
  isInTransaction() {
    return this.transaction;
  }
  whoAmI() {
    return this.label;
  }
}

const requestOf = (root: FakeEntityManager) =>
  // The fake has the members the proxy and these tests touch; the proxy is typed for the real entity manager.
  requestEntityManager(root as unknown as EntityManager) as unknown as FakeEntityManager;

describe('requestEntityManager', () => {
  it('answers what preparedQuery asks (transaction, connection) without forking', () => {
    const root = new FakeEntityManager();
    const before = FakeEntityManager.forks;
    const em = requestOf(root);
    expect(em.isInTransaction()).toBe(false);
    expect(em.getConnection()).toBe(root.connection);
    expect(FakeEntityManager.forks).toBe(before);
  });

  it('forks once, at the first other use, and then sends everything to the fork, bound to it', () => {
    const root = new FakeEntityManager();
    const before = FakeEntityManager.forks;
    const em = requestOf(root);
    const whoAmI = em.whoAmI;
    expect(whoAmI()).toBe(`fork ${before + 1}`);
    expect(em.label).toBe(`fork ${before + 1}`);
    expect(em.whoAmI).toBe(whoAmI);
    em.transaction = true;
    expect(em.isInTransaction()).toBe(true);
    expect(root.transaction).toBe(false);
    expect('whoAmI' in em).toBe(true);
    expect(em).toBeInstanceOf(FakeEntityManager);
    expect(FakeEntityManager.forks).toBe(before + 1);
  });

  it('gives each request a fork of its own', () => {
    const root = new FakeEntityManager();
    const [first, second] = [requestOf(root), requestOf(root)];
    first.label = 'first';
    expect(second.whoAmI()).not.toBe('first');
    expect(first.whoAmI()).toBe('first');
    expect(root.label).toBe('root');
  });
});
