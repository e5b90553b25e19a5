import { v7 } from 'uuid';

/** New ids are UUID v7: they sort by creation time, which keeps btree inserts local. */
export const newId = (): string => v7();
