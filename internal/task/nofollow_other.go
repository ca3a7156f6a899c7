//go:build !unix

package task

// noFollow is 0 where O_NOFOLLOW does not exist; readRegular still refuses
// anything that is not a regular file once opened.
const noFollow = 0
