/**
 * What the server's bundle runs for tRPC's object spread (`{ ...a, ...b }`, compiled by its build to Babel's
 * `_objectSpread2` helper): build.ts puts this function in the helper's place. Babel's helper copies each property
 * with `Object.defineProperty`, which made it about a tenth of the server's work on a `/me` (each procedure call spreads
 * its options and context at every middleware). This copies with `Object.assign` — the same result for the plain
 * objects tRPC spreads — but for a source that has an own `__proto__` key (an object JSON.parse made from a request):
 * assigning that key would set the target's prototype, so its properties are defined one by one, as a spread does.
 */
export function objectSpread(target: object, ...sources: unknown[]): object {
  for (const source of sources) {
    if (source === null || source === undefined) continue;
    if (!Object.hasOwn(source, '__proto__')) {
      Object.assign(target, source);
      continue;
    }
    // hasOwn held, so the source is an object.
    const record = source as Record<PropertyKey, unknown>;
    for (const key of Reflect.ownKeys(record)) {
      if (Object.prototype.propertyIsEnumerable.call(record, key))
        Object.defineProperty(target, key, { value: record[key], enumerable: true, configurable: true, writable: true });
    }
  }
  return target;
}
