/**
 * @peculiar/x509 v2 wires its algorithms through tsyringe, which refuses to load unless
 * `Reflect.getMetadata` exists. Only `reflect-metadata`-style lookups are needed (tsyringe
 * reads constructor parameter types and its own injection tokens), so this installs the
 * smallest compatible subset instead of adding a dependency. A real polyfill loaded
 * earlier wins: nothing is replaced when `Reflect.getMetadata` is already defined.
 */
type Key = unknown;
type Target = object;
type Property = string | symbol | undefined;

interface MetadataReflect {
  defineMetadata(key: Key, value: unknown, target: Target, property?: Property): void;
  getOwnMetadata(key: Key, target: Target, property?: Property): unknown;
  getMetadata(key: Key, target: Target, property?: Property): unknown;
  hasOwnMetadata(key: Key, target: Target, property?: Property): boolean;
  hasMetadata(key: Key, target: Target, property?: Property): boolean;
  metadata(key: Key, value: unknown): (target: Target, property?: Property) => void;
}

const reflect = Reflect as typeof Reflect & Partial<MetadataReflect>;

if (typeof reflect.getMetadata !== 'function') {
  const store = new WeakMap<Target, Map<Property, Map<Key, unknown>>>();

  const table = (target: Target, property: Property, create: boolean): Map<Key, unknown> | undefined => {
    let byProperty = store.get(target);
    if (!byProperty) {
      if (!create) return undefined;
      byProperty = new Map();
      store.set(target, byProperty);
    }
    let entries = byProperty.get(property);
    if (!entries && create) {
      entries = new Map();
      byProperty.set(property, entries);
    }
    return entries;
  };

  const owner = (key: Key, target: Target, property: Property): Map<Key, unknown> | undefined => {
    for (let o: Target | null = target; o !== null; o = Object.getPrototypeOf(o) as Target | null) {
      const entries = table(o, property, false);
      if (entries?.has(key)) return entries;
    }
    return undefined;
  };

  const shim: MetadataReflect = {
    defineMetadata: (key, value, target, property) => {
      table(target, property, true)?.set(key, value);
    },
    getOwnMetadata: (key, target, property) => table(target, property, false)?.get(key),
    getMetadata: (key, target, property) => owner(key, target, property)?.get(key),
    hasOwnMetadata: (key, target, property) => table(target, property, false)?.has(key) ?? false,
    hasMetadata: (key, target, property) => owner(key, target, property) !== undefined,
    metadata: (key, value) => (target, property) => {
      table(target, property, true)?.set(key, value);
    },
  };
  Object.assign(reflect, shim);
}
