"""hypa.runtime"""
