import { describeMatrixCut } from './support/matrix-cut.js';

describeMatrixCut(['s3']);
