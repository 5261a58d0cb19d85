// The runner shared by cluster.mjs and cluster-map.mjs (filled in next).
export {};
