import { v7 } from 'uuid';

/** New ids are UUID v7: they sort by creation time, which keeps btree inserts local. */
export const newId = (): string => v7();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID (any version, either case): ids from outside are checked before they reach a query. */
export const isUuid = (value: string): boolean => UUID.test(value);
